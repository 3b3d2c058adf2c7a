from rocketspec.cli import main

raise SystemExit(main())
