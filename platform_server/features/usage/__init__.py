"""Model usage: the one recording point of every model call (`meter`) and the usage reports."""
