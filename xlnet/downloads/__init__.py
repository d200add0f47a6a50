"""The released checkpoints and the paper's data sets, fetched, checked
and unpacked into the layout `reproduce.py` reads (`download.py`).

  sources      what each entry is: its URLs, checksums, place and terms
  installer    the run: fetch, check, unpack, rename into place, manifest
  http_fetch   resumable, checked HTTP downloads (the standard library)
  drive_page   Google Drive's confirmation page, followed to the file
  progress_line   a download's progress lines
  unpack       file signatures, zip and tar.gz archives unpacked safely
"""
