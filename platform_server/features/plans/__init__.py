"""Plans of plan-execute turns and their steps, readable only by the user whose turn made them."""
