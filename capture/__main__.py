from capture.cli import main

raise SystemExit(main())
