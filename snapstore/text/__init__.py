"""Text: the line diff engine, the three-way merge a rewind uses to keep the user's edits,
and unified-diff text. Pure functions on bytes; nothing here touches a store or a file."""
