"""The process: the worker supervisor, first-start secrets, logging, metrics."""
