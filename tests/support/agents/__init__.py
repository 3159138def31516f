"""Test support for driving the real agent CLIs (from the npm registry) against a fake model."""
