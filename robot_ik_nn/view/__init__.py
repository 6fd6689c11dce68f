"""The browser view: the arm in 3-D, a target to drag, the answer live (``robot-ik-nn view``).

page.py     the viser page (scene, target handle, side panel) over one ``Solver``
urdf.py     the arm's URDF for the page (yourdfpy), its joints in the solver's order
cli.py      the ``view`` sub-command's arguments and what it runs
network_drawing.py   the network as points, colours and lines (pure numpy; RViz and the page)
learning.py the network drawing and the error curve on the page (watching it learn)
training.py ``train --view``: that page fed by a trainer in the same process (no ROS)

Nothing here imports rclpy or torch at import time; ``--ros`` imports nodes/view_link.py (the
rclpy glue) lazily, and training.py imports torch once it feeds a page from a trainer.
"""
