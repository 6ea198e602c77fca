"""scaleout: the library behind the Scale Out book.

Reference algorithms and cost models (numpy only), hardware tables, a launcher that runs
torch.distributed code on CPU processes, and the figure/widget helpers the chapters use.
"""

__version__ = "0.1.0"
