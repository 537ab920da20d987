"""The ops: one class per op, forward and backward side by side, one file per family."""
