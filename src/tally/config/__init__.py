"""Configuration: settings from the environment, the clouds config file, clouds.yaml resolution, and the
logging every command sets up from them."""

from ._clouds import CloudEntry as CloudEntry
from ._clouds import CloudsConfigError as CloudsConfigError
from ._clouds import load_clouds_config as load_clouds_config
from ._errors import ConfigError as ConfigError
from ._load import load_settings as load_settings
from ._logging import setup_logging as setup_logging
from ._settings import Settings as Settings
from ._show import render_settings as render_settings
from ._state_files import prepare_state_file as prepare_state_file

__all__ = [
    "CloudEntry",
    "CloudsConfigError",
    "ConfigError",
    "Settings",
    "load_clouds_config",
    "load_settings",
    "prepare_state_file",
    "render_settings",
    "setup_logging",
]
