"""Trainers behind one function, and the trajectories and run records they produce."""

from fastattn.training.records import environment, read_record, write_record
from fastattn.training.trainer import TrainConfig, rebuild_run, run_config, train
from fastattn.training.trajectory import Trajectory

__all__ = ["TrainConfig", "Trajectory", "environment", "read_record", "rebuild_run", "run_config",
           "train", "write_record"]
