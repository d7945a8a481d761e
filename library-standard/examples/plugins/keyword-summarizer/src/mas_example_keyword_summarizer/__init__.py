"""Example mas-lab plugin: the ``keyword_digest`` summarizer (see ``plugin``)."""
