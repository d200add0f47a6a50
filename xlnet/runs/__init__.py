"""The base of the programs that drive other programs as children
(reproduce.py's tables, bench/chain.py's chain): `xlnet/reproduce/` and
`xlnet/chain/` stand side by side on it and import nothing from each other.

  children  the children's loop: logs, signals passed on, stops, a watcher
  work_dir  the work dir's lock; its settings recorded, others refused
  timing    the line printed as each run starts: elapsed time and ETA
"""
