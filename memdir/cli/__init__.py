"""`memdir ...`: the command line. Each module holds one group of commands and registers it on the one
Typer app (`memdir.cli.common.app`); importing this package registers them all, in the order
`memdir --help` lists them."""

# isort: skip_file
from memdir.cli import entries  # noqa: F401
from memdir.cli import status  # noqa: F401
from memdir.cli import search  # noqa: F401
from memdir.cli import transfer  # noqa: F401
from memdir.cli import serve  # noqa: F401
from memdir.cli import maintenance  # noqa: F401
from memdir.cli import episodes  # noqa: F401
from memdir.cli import threads  # noqa: F401
from memdir.cli import graph  # noqa: F401
from memdir.cli import evolve  # noqa: F401
from memdir.cli import tokens  # noqa: F401
from memdir.cli.common import app

__all__ = ["app"]
