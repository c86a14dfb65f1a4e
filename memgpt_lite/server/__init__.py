"""`memgpt-lite serve`: agents over HTTP (the `[server]` extra: FastAPI on uvicorn).

app.py builds the application; steps.py runs agents' steps off the event
loop; api_agents.py and api_memory.py are our own routes, letta/ the routes
Letta's clients call, openai_compat.py `POST /v1/chat/completions`.
"""
