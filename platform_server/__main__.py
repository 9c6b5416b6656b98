import gc

# The start builds ~100k objects that live as long as the process and almost no garbage: no collections
# (about 40 ms of a restart) until cli.serve freezes what the start built (gc.freeze) and turns them back on.
gc.disable()

from platform_server.cli import main  # noqa: E402

if __name__ == "__main__":
    main()
