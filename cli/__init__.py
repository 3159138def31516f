"""The snapstore command line (import name ``snapstore_cli``).

Thin by design: each module parses one command group, calls the library and
renders the result, with rich for people and ``--json`` for programs. Only this
package reads the environment, the config file, or talks to the terminal.
"""
