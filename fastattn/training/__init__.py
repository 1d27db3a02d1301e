"""Trainers behind one function, and the trajectories and run records they produce."""

from fastattn.training.callbacks import Record, TensorBoardLogger, WandbLogger
from fastattn.training.checkpoint import Checkpointing
from fastattn.training.records import RecordError, environment, read_record, write_record
from fastattn.training.trainer import RunsInterrupted, TrainConfig, rebuild_run, run_config, train, train_many
from fastattn.training.trajectory import Trajectory

__all__ = ["Checkpointing", "Record", "RecordError", "RunsInterrupted", "TensorBoardLogger",
           "TrainConfig", "Trajectory", "WandbLogger", "environment", "read_record", "rebuild_run",
           "run_config", "train", "train_many", "write_record"]
