"""The solver for a web page or Node, without a Python process behind it: what the JavaScript
module in ``web/`` (the repository's folder: ``web/src/ik.js``) reads.

- ``model.py``: ``web_model(solver)`` and ``write_web_model(solver, path)``, a solver's packed
  model buffer and network weights as one JSON file (``model.web.json``) with the names of its
  layout, so that the JavaScript solver reads the arm, the settings and the network exactly as
  the compiled kernel does.
- ``folder.py``: ``robot-ik-nn export MODEL --web DIR``, the static folder of pages around that
  file (the arm to drag, the crowd of arms), served by any static file server.
"""
