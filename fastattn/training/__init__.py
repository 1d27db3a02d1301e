"""Trainers behind one function, and the trajectories and run records they produce."""

from fastattn.training.checkpoint import Checkpointing
from fastattn.training.records import RecordError, environment, read_record, write_record
from fastattn.training.trainer import RunsInterrupted, TrainConfig, rebuild_run, run_config, train, train_many
from fastattn.training.trajectory import Trajectory

__all__ = ["Checkpointing", "RecordError", "RunsInterrupted", "TrainConfig", "Trajectory",
           "environment", "read_record", "rebuild_run", "run_config", "train", "train_many",
           "write_record"]
