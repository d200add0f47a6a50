"""Google Drive's confirmation page (`http_fetch.fetch(..., drive=True)`).

A large file's Drive link answers with a page instead of the file ("can't
scan this file for viruses"); its download form (on older pages a
`uc-download-link`) leads to the file. A page that states an error (quota
exceeded, no access) is `Refused`.
"""
import html.parser
import urllib.parse


class Refused(Exception):
  """Google Drive answered with a page instead of the file."""


class _Form(html.parser.HTMLParser):
  """Reads the page: the action and hidden inputs of its `download-form`,
  or on older pages the href of its `uc-download-link`, and its error
  caption, if any."""

  def __init__(self):
    super().__init__()
    self.action, self.inputs, self.link, self.error = None, {}, None, None
    self._in_form = self._in_error = False

  def handle_starttag(self, tag, attrs):
    attrs = dict(attrs)
    if tag == "form" and attrs.get("id") == "download-form":
      self._in_form, self.action = True, attrs.get("action")
    elif tag == "input" and self._in_form and attrs.get("name"):
      if (attrs.get("type") or "").lower() == "hidden":
        self.inputs[attrs["name"]] = attrs.get("value") or ""
    elif tag == "a" and attrs.get("id") == "uc-download-link":
      self.link = attrs.get("href")
    elif "uc-error-subcaption" in (attrs.get("class") or "").split():
      self._in_error = True

  def handle_endtag(self, tag):
    if tag == "form":
      self._in_form = False
    elif tag == "p":
      self._in_error = False

  def handle_data(self, data):
    if self._in_error and data.strip():
      self.error = (self.error or "") + data.strip()


def confirmed_url(page, page_url):
  """The URL the confirmation `page` (str) leads to, resolved against
  `page_url` (the link asked for, not a mirror's), or None.

  Raises:
    Refused: the page states an error (quota exceeded, ...).
  """
  form = _Form()
  form.feed(page)
  if form.error:
    raise Refused(f"Google Drive says: {form.error}")
  if form.action:
    action = urllib.parse.urljoin(page_url, form.action)
    parts = urllib.parse.urlsplit(action)
    query = urllib.parse.parse_qsl(parts.query) + list(form.inputs.items())
    return urllib.parse.urlunsplit(parts._replace(
        query=urllib.parse.urlencode(query)))
  if form.link:
    return urllib.parse.urljoin(page_url, form.link)
  return None
