"""ROS 2 nodes: thin rclpy glue over the core. Importing this package needs rclpy."""
