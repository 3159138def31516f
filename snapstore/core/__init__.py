"""The record layer: records and their encodings, blobs, the database, the lock files, the
repository of tables above it, and the workspace's confined file I/O. Nothing here knows
what a rewind or a scan is; everything above builds on it."""
