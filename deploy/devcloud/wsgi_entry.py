"""The WSGI application gunicorn serves for one API of the development cloud.

Each service parses ``sys.argv`` with oslo.config while its application is built, and would refuse
gunicorn's own arguments, so the arguments the service should see (``DEVCLOUD_WSGI_ARGV``, JSON) are
put in place before the service's WSGI module (``DEVCLOUD_WSGI_MODULE``) is imported. This file runs
inside the services' virtualenv and imports nothing of Tally.
"""

import importlib
import json
import os
import sys

sys.argv = json.loads(os.environ["DEVCLOUD_WSGI_ARGV"])
application = importlib.import_module(os.environ["DEVCLOUD_WSGI_MODULE"]).application
