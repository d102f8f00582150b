from xcompat.cli import main

raise SystemExit(main())
