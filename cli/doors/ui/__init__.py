"""The timeline page of ``snapstore ui``: its server (``server``), its API (``frames``, docs/api.md)
and the page itself (``index.html``, ``app.js``, ``app.css``: plain files, no build step)."""
