import sys

try:
    from capture.commands.cli import main

    sys.exit(main())
except KeyboardInterrupt:  # Ctrl-C while starting (imports, argument parsing): nothing was read or written yet
    sys.stderr.write("interrupted (Ctrl-C) while starting; nothing was changed\n")
    sys.exit(130)
