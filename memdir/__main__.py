"""`python -m memdir ...`: the same command line as the `memdir` script."""

from memdir.launch import main

if __name__ == "__main__":
    main()
