"""Call stacks: the icicle and the bottom-up screens (``i``, ``b``), their widget and the main screen's keys."""
