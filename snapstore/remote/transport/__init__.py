"""The remote's transport: object stores (S3, a folder), their credentials and errors.
Nothing here knows what the objects mean."""
