# robot_ik_nn — two commands on a fresh machine:
#   make train   a ROS 2 training session for the Niryo One (full pose, CPU, < 5 min), then the eval table
#   make test    lint (ruff, line length 99) and the whole test suite (the browser-page tests
#                need chromium: apt-get install -y chromium; without it they skip and say so)
# Both create .venv when it is missing and install what the package needs.

PYTHON      ?= python3
VENV        ?= .venv
TORCH       ?= torch==2.13.0
PYTEST_ARGS ?=
PY          := $(VENV)/bin/python
PIP         := $(PY) -m pip
STAMP       := $(VENV)/.installed
# ROS 2 from PyPI when none is sourced (ROS_DISTRO unset); the [fastrtps] extra brings the middleware.
ROS_WHEELS  := 'ros-rclpy[fastrtps]' ros-std-msgs ros-sensor-msgs ros-geometry-msgs ros-trajectory-msgs \
               ros-visualization-msgs ros-diagnostic-msgs ros-std-srvs

.PHONY: install venv test test-gpu lint train screenshots clean

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
	$(PIP) install -q -e '.[train,serve,peers,hardware,view,test]'
	@touch $@

test: $(STAMP) lint
	$(PY) -m pytest $(PYTEST_ARGS)

# the CUDA tests alone, on a machine with a GPU: without CUDA they fail here instead of skipping
test-gpu: $(STAMP)
	ROBOT_IK_NN_REQUIRE_CUDA=1 $(PY) -m pytest -m cuda $(PYTEST_ARGS)

lint: $(STAMP)
	$(VENV)/bin/ruff check robot_ik_nn test launch setup.py

# the README's pictures of the browser page (docs/view_*.png), taken by the page's own tests
screenshots: $(STAMP)
	ROBOT_IK_NN_SCREENSHOTS=$(CURDIR)/docs $(PY) -m pytest -q test/test_view.py::test_screenshot_shows_the_arm \
		test/test_view_ros.py::test_training_session_page_shows_the_network_and_the_error_curve

train: $(STAMP)
	$(VENV)/bin/robot-ik-nn launch train
	$(VENV)/bin/robot-ik-nn eval models/niryo_one --targets 10000

clean:
	rm -rf $(VENV) build install log .pytest_cache *.egg-info
