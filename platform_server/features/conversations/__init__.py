"""Conversations and their stored messages: listing, renaming, deleting and exporting them."""
