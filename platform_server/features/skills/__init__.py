"""Skills: reusable instruction bundles (SKILL.md plus files) that agents bind and the runtime appends."""
