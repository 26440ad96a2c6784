from agents.repair.cli import main

raise SystemExit(main())
