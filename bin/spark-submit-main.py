"""`spark-submit`'s main file for the job: the same commands as `shadow-controller`.

    spark-submit --master spark://HOST:7077 --py-files dist/shadow-controller.zip \
        bin/spark-submit-main.py run --config conf/shadow-controller.toml ...

spark-submit runs a Python file, not an entry point; this one hands its arguments to
`shadow_controller.cli.main` (found in the `--py-files` archive, or the driver's own installation).
"""

import sys

from shadow_controller.cli import main

sys.exit(main())
