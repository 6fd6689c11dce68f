"""Sphinx configuration of robot_ik_nn's documentation, laid out as docs.ros.org builds a ROS 2
Python package: markdown pages (myst-parser), the API reference from the docstrings (autodoc),
the ROS documentation theme. ``make docs`` builds it with warnings as errors; rosdoc2 reads the
same folder through rosdoc2.yaml."""

import re
import sys
from pathlib import Path

HERE = Path(__file__).resolve().parent
# the package's root: this file's parent, or (rosdoc2 runs a copy of this file from its build
# folder inside the package) the first folder above that holds package.xml and the package
ROOT = next(
    (p for p in (HERE.parent, *HERE.parents) if (p / "package.xml").is_file()
     and (p / "robot_ik_nn").is_dir()),
    HERE.parent,
)
sys.path.insert(0, str(ROOT))  # the package from this checkout, installed or not

project = "robot_ik_nn"
author = "robot_ik_nn maintainers"
copyright = "robot_ik_nn maintainers, BSD-3-Clause"
release = re.search(r"<version>(.*?)</version>", (ROOT / "package.xml").read_text()).group(1)
version = release

extensions = ["myst_parser", "sphinx.ext.autodoc", "sphinx.ext.napoleon"]
source_suffix = {".md": "markdown", ".rst": "restructuredtext"}
root_doc = "index"
exclude_patterns = ["_build", "**/_build"]
myst_heading_anchors = 3  # links to a page's sections: page.md#section-title
myst_enable_extensions = ["colon_fence"]

autodoc_member_order = "bysource"
autodoc_typehints = "none"  # the docstrings say what each argument holds
autodoc_default_options = {"members": True, "undoc-members": False}

html_theme = "sphinx_rtd_theme"
html_title = f"robot_ik_nn {release}"
