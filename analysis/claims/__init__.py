"""The paper's claims decided on the cells: verdicts, the sequential replay, and their text."""
