"""One model's runner: plans the unique inputs a set of tests needs and scores them in
batches (a rank's share of them), with its counts and progress."""
