"""`python -m memdir ...`: the same command line as the `memdir` script."""

from memdir.cli import app

if __name__ == "__main__":
    app()
