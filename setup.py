from glob import glob

from setuptools import find_packages, setup

PACKAGE = "robot_ik_nn"

setup(
    name=PACKAGE,
    version="0.3.0",
    description="A neural network learns a robot arm's inverse kinematics by reward and serves it "
    "through ROS 2",
    license="BSD-3-Clause",
    packages=find_packages(exclude=["test", "test.*"]),
    data_files=[
        ("share/ament_index/resource_index/packages", [f"resource/{PACKAGE}"]),
        (f"share/{PACKAGE}", ["package.xml"]),
        (f"share/{PACKAGE}/launch", glob("launch/*.py")),
        (f"share/{PACKAGE}/urdf", glob("urdf/*.urdf")),
        (f"share/{PACKAGE}/config", glob("config/*.yaml") + glob("config/*.rviz")),
    ],
    python_requires=">=3.10",
    # The base install serves: the compiled IK core, the model folders, the nodes. No torch.
    # Each is a rosdep key of package.xml (test/test_rosdep.py); the weights are read and
    # written with numpy (robot_ik_nn/tensor_file.py), not the safetensors package.
    install_requires=["numpy", "numba", "scipy", "urchin", "pyyaml"],
    extras_require={
        # serve: what a small computer beside a real arm needs beyond the base (the onnx backend)
        "serve": ["onnxruntime"],
        # hardware: the real arms' client libraries (pyniryo for Ned, pyserial for InMoov servos),
        # pybullet, which the simulated arm, its camera and the emulators move, and OpenCV, which
        # finds the tool's marker in a camera's images (calibration/camera.py): opencv-python,
        # the one pyniryo requires (its -headless twin beside it would write the same cv2/)
        "hardware": ["pyniryo", "pyserial", "pybullet", "opencv-python"],
        # view: the browser page (robot-ik-nn view); its tests also need a chromium binary
        "view": ["viser>=1.1", "yourdfpy"],
        # train: install torch==2.13.0 (or your CUDA build) first: then this adds nothing
        "train": ["torch", "pybullet", "tqdm", "matplotlib", "tensorboard", "onnx", "onnxruntime"],
        # peers: the established solvers robot-ik-nn bench --peers compares against
        "peers": ["pytracik", "roboticstoolbox-python", "pybullet", "threadpoolctl"],
        # docs: make docs, the pages and the API reference as docs.ros.org builds them (Sphinx,
        # markdown through myst, the ROS docs theme); rosdoc2 itself reads the same docs/ folder
        "docs": ["sphinx>=7", "myst-parser>=2", "sphinx-rtd-theme>=2"],
        "test": [
            "pytest",
            "pytest-timeout",
            "pytest-xdist",
            "hypothesis",
            "ruff",
            "colcon-core",
            "colcon-ros",
            "colcon-python-setup-py",
            # the weights format checked against the library that defined it
            "safetensors",
            # building the interface fixtures (test/interfaces: moveit_msgs, control_msgs) with
            # rosidl from PyPI; the ROS 2 wheels themselves are the Makefile's ROS_WHEELS
            "cmake",
            "colcon-cmake",
            "catkin-pkg",
        ],
    },
    zip_safe=True,
    entry_points={
        "console_scripts": [
            "robot-ik-nn = robot_ik_nn.cli:main",
            "sim_node = robot_ik_nn.nodes.sim_node:main",
            "arm_node = robot_ik_nn.nodes.arm_node:main",
            "learner_node = robot_ik_nn.nodes.learner_node:main",
            "inference_node = robot_ik_nn.nodes.inference_node:main",
            "tracker_node = robot_ik_nn.nodes.tracker_node:main",
            "calibration_node = robot_ik_nn.nodes.calibration_node:main",
        ],
    },
)
