"""The capture engine: run the book's real snippet files, freeze their output into fragments.

The core modules here are plain Python (stdlib only, no Sphinx) so that they also
run on a GPU machine where nothing can be installed. ``capture.sphinxext`` is the
only place that imports Sphinx.
"""

__version__ = "0.1.0"
