"""`python -m <package>.report`: what works on this device, every operator
and every capability, as JSON, Markdown and HTML; `python -m
<package>.report diff OLD.json NEW.json` for what got worse
(docs/guide/report.md)."""

if __name__ == "__main__":
    from ._report import entry

    entry(__package__)
