"""Operations between a store and a remote: push, pull, and the remote's own log, fsck
and gc."""
