"""Routes the original web console calls that have no feature behind them here, answered honestly
(empty lists, "not available", the project's own documents)."""
