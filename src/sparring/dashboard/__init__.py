"""`sparring serve`: the local dashboard (FastAPI, server-rendered Jinja2 pages with htmx)
over the results store, and its JSON API under `/api`. Needs the `dashboard` extra.

`app` builds the FastAPI app, `state` is what it knows, `pages` and `api` its routes,
`access` and `auth` who may do what; `catalog`, `views`, `status`, `charts`, `compare` and
`exporting` shape what the pages show. Nothing imports this package but `sparring serve`.
"""
