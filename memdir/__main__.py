"""`memdir ...` and `python -m memdir ...`: the command line, entered through `main`."""


def main() -> None:
    """Run the command line; Ctrl-C while it is still starting ends it quietly (status 130).

    Importing the command line and building its commands takes a few hundred milliseconds;
    a KeyboardInterrupt raised in there would print a traceback of import machinery. Once a
    command runs, click turns Ctrl-C into "Aborted!", and `memdir serve` handles it itself
    (`memdir.server.stopping`).
    """
    try:
        from memdir.cli import app

        app()
    except KeyboardInterrupt:
        raise SystemExit(130) from None


if __name__ == "__main__":
    main()
