"""One router per resource; `app.main` assembles them."""
