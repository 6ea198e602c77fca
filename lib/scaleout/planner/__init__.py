"""Planning 3D parallelism (chapter 14): predict a plan's step, search the plans."""

from .model import (GPT3, GPUS, LLAMA2_70B, LLAMA3_405B, ONE_T, Cluster, Model, a100_cluster,
                    h100_cluster, model_from_table)
from .step import OVERLAPS, PARTS, PRECISIONS, Plan, Prediction, check_plan, memory_bytes, predict
from .search import MAX_PLANS, Grid, Space, candidates, divisors, grid, search
from .published import Row, Run, Summary, calibration, runs, summary, table1_best, validation
