"""Generated source in Jupyter: a transformed function shows its code, highlighted by pygments
when it is installed (plain text otherwise). IPython asks an object for `_repr_html_`; function
objects take attributes, so the transforms' wrappers carry one."""
import html


def highlighted(text):
    try:
        from pygments import highlight
        from pygments.formatters import HtmlFormatter
        from pygments.lexers import PythonLexer
    except ImportError:
        return f"<pre>{html.escape(text)}</pre>"
    return highlight(text, PythonLexer(), HtmlFormatter(noclasses=True))


def show_source(fn):
    """Give `fn` a Jupyter display: its secant.source, highlighted."""
    def _repr_html_():
        from secant.transforms import source
        return highlighted(source(fn))
    fn._repr_html_ = _repr_html_
    return fn
