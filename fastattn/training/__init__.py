"""Trainers behind one function, and the trajectories and run records they produce."""

from fastattn.train.records import environment, read_record, write_record
from fastattn.train.trainer import TrainConfig, train
from fastattn.train.trajectory import Trajectory

__all__ = ["TrainConfig", "Trajectory", "environment", "read_record", "train", "write_record"]
