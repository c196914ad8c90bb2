"""Bytes in and out: reading (gzip, size limits), recovering cut JSON, JSON out (any integer size), string interning."""
