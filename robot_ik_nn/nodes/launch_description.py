"""For the launch files in launch/: robot_ik_nn.nodes.session's plan as launch_ros Node actions.

Only standard launch / launch_ros actions are used. The plan (which nodes, which parameters)
lives in robot_ik_nn/nodes/session.py, the same plan `robot-ik-nn launch` runs in one process.
"""

from launch.actions import (
    DeclareLaunchArgument,
    EmitEvent,
    ExecuteProcess,
    OpaqueFunction,
    RegisterEventHandler,
)
from launch.event_handlers import OnProcessExit
from launch.events import Shutdown
from launch.substitutions import LaunchConfiguration
from launch_ros.actions import Node

from launch import LaunchDescription

from .session import plan
from .session_arguments import ARGUMENTS


def _actions(context, session):
    given = {name: LaunchConfiguration(name).perform(context) for name in ARGUMENTS[session]}
    actions = []
    for spec in plan(session, given):
        if spec.command:  # not a ROS node (an emulator in a dry run)
            actions.append(ExecuteProcess(cmd=spec.command, name=spec.name, output="screen"))
            continue
        node = Node(
            package=spec.package,
            executable=spec.executable,
            name=spec.name,
            parameters=[spec.parameters] if spec.parameters else [],
            remappings=spec.remappings,
            arguments=spec.arguments,
            output="screen",
        )
        actions.append(node)
        if spec.ends_session:
            actions.append(
                RegisterEventHandler(
                    OnProcessExit(
                        target_action=node,
                        on_exit=[EmitEvent(event=Shutdown(reason=f"{spec.name} finished"))],
                    )
                )
            )
    return actions


def describe(session):
    declared = [
        DeclareLaunchArgument(name, default_value=arg.default, description=arg.description)
        for name, arg in ARGUMENTS[session].items()
    ]
    return LaunchDescription(declared + [OpaqueFunction(function=_actions, args=[session])])
