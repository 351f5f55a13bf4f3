# placeholder: filled in by issue 5/6 work
