"""`python -m xlnet.configs`: prints the directory of the shipped configs
(e.g. `cp "$(python -m xlnet.configs)/demo.flags" configs/` to edit one)."""
from xlnet import configs

if __name__ == "__main__":
  print(configs.DIR)
