;;; eglot_driver.el --- drives Emacs's eglot for tests/editors.py  -*- lexical-binding: t -*-
;; Commands arrive as JSON lines on the Unix socket $CW_DRIVER_SOCKET, each answered by one
;; JSON line.  Every wait is `accept-process-output' in a loop with a deadline; the LSP
;; server is $CW_LSP_CMD (a JSON array) for the files of $CW_ROOT.

;; Debian's elpa-eglot (and the newer project, xref it needs), as `package-initialize'
;; activates them for a user, ahead of the older copies built into Emacs 28
(when (file-directory-p "/usr/share/emacs/site-lisp/elpa")  ; else Emacs 29's own eglot
  (dolist (dir (directory-files "/usr/share/emacs/site-lisp/elpa" t "-[0-9.]+\\'"))
    (push dir load-path)))
(require 'eglot)
(require 'flymake)
(require 'xref)
(require 'cl-lib)

(defvar cw-root (file-name-as-directory (getenv "CW_ROOT")))
(defvar cw-timeout (/ (string-to-number (or (getenv "CW_TIMEOUT_MS") "60000")) 1000.0))
(defvar cw-inbox nil)
(defvar cw-buffered "")

(setq eglot-server-programs
      `(((python-mode js-mode c-mode sh-mode) . ,(append (json-parse-string (getenv "CW_LSP_CMD")) nil)))
      eglot-confirm-server-initiated-edits nil
      eglot-sync-connect cw-timeout
      eglot-connect-timeout cw-timeout
      eglot-send-changes-idle-time 0
      jsonrpc-default-request-timeout cw-timeout
      make-backup-files nil
      create-lockfiles nil
      auto-save-default nil
      ;; the person answers yes (e.g. a rename touching a file not visited yet)
      use-short-answers t)
(fset 'y-or-n-p (lambda (&rest _) t))
(fset 'yes-or-no-p (lambda (&rest _) t))
;; the test's root is the project, whatever version control it has
(setq project-find-functions (list (lambda (_dir) (cons 'transient cw-root))))

(defun cw-wait (what predicate)
  "Process input until PREDICATE holds; an error naming WHAT after the deadline."
  (let ((deadline (+ (float-time) cw-timeout)))
    (while (not (funcall predicate))
      (when (> (float-time) deadline) (error "timed out waiting for %s" what))
      (accept-process-output nil 0.005))))

(defun cw-buffer (path)
  (or (find-buffer-visiting path) (error "no buffer for %s" path)))

(defun cw-text (buffer)
  (with-current-buffer buffer
    (save-restriction (widen) (buffer-substring-no-properties (point-min) (point-max)))))

(defmacro cw-at (args &rest body)
  "Run BODY in the buffer of ARGS's path, point at its LSP line and character."
  (declare (indent 1))
  `(with-current-buffer (cw-buffer (plist-get ,args :path))
     (goto-char (eglot--lsp-position-to-point
                 (list :line (plist-get ,args :line) :character (plist-get ,args :character))))
     ,@body))

(defun cw-server () (eglot--current-server-or-lose))

(defun cw-diagnostics (buffer)
  (with-current-buffer buffer
    (vconcat
     (mapcar (lambda (d)
               (let ((beg (flymake-diagnostic-beg d)))
                 (list :line (1- (line-number-at-pos beg))
                       :character (save-excursion (goto-char beg) (current-column))
                       :message (flymake-diagnostic-text d)
                       :severity (symbol-name (flymake-diagnostic-type d)))))
             (sort (flymake-diagnostics) (lambda (a b) (< (flymake-diagnostic-beg a)
                                                          (flymake-diagnostic-beg b))))))))

(defun cw-contains (haystack needle)
  (or (null needle) (string-search needle haystack)))

(defun cw-op-open (args)
  (with-current-buffer (find-file-noselect (plist-get args :path))
    (eglot-ensure)
    ;; eglot-ensure connects after the command that opened the buffer: run that hook now
    (run-hooks 'post-command-hook)
    (cw-wait "eglot's connection" (lambda () (eglot-managed-p)))
    (list :mode (symbol-name major-mode))))

(defun cw-servers ()
  (cl-loop for servers being the hash-values of eglot--servers-by-project append servers))

(defun cw-op-info (_args)
  (let ((server (or (car (cw-servers)) (error "no server started yet"))))
    (list :name (jsonrpc-name server)
          :pid (process-id (jsonrpc--process server))
          :server_info (or (eglot--server-info server) :null))))

(defun cw-op-hover (args)
  (cw-at args
    (let ((hover (jsonrpc-request (cw-server) :textDocument/hover
                                  (eglot--TextDocumentPositionParams))))
      (if hover (eglot--hover-info (plist-get hover :contents)) :null))))

(defun cw-op-definition (args)
  (cw-at args
    (let ((identifier (xref-backend-identifier-at-point 'eglot)))
      (vconcat
       (mapcar (lambda (item)
                 (let ((location (xref-item-location item)))
                   (list :path (xref-file-location-file location)
                         :line (1- (xref-file-location-line location))
                         :character (xref-file-location-column location))))
               (xref-backend-definitions 'eglot identifier))))))

(defun cw-op-completion (args)
  (cw-at args
    (let* ((capf (eglot-completion-at-point))
           (table (nth 2 capf)))
      (vconcat (all-completions "" table)))))

(defun cw-op-rename (args)
  (cw-at args (eglot-rename (plist-get args :new_name)))
  (let (changed)
    (dolist (buffer (buffer-list))
      (when (and (buffer-file-name buffer) (buffer-modified-p buffer))
        (setq changed (append changed (list (intern (concat ":" (buffer-file-name buffer)))
                                            (cw-text buffer))))))
    changed))

(defun cw-op-format (args)
  (with-current-buffer (cw-buffer (plist-get args :path))
    (eglot-format-buffer)
    (cw-text (current-buffer))))

(defun cw-op-edit (args)
  "An unsaved change: lines [first, last) replaced; then a round trip on the connection
(the server has the change once it answers a later request, be it with an error)."
  (with-current-buffer (cw-buffer (plist-get args :path))
    (save-excursion
      (goto-char (point-min))
      (forward-line (plist-get args :first))
      (let ((beg (point)))
        (forward-line (- (plist-get args :last) (plist-get args :first)))
        (delete-region beg (point))
        (goto-char beg)
        (dolist (line (append (plist-get args :lines) nil)) (insert line "\n"))))
    (eglot--signal-textDocument/didChange)
    (condition-case err
        (jsonrpc-request (cw-server) :textDocument/documentSymbol
                         (list :textDocument (eglot--TextDocumentIdentifier)))
      ;; the server's error answer is a round trip too; a timeout is not
      (jsonrpc-error (unless (assq 'jsonrpc-error-code (cdr err))
                       (signal (car err) (cdr err)))))
    (cw-text (current-buffer))))

;; a command the person runs (workspace/executeCommand) on the buffer's document; the
;; server's workspace/applyEdit that follows goes through eglot's own handler
(defun cw-op-execute (args)
  (with-current-buffer (cw-buffer (plist-get args :path))
    (jsonrpc-request (cw-server) :workspace/executeCommand
                     (list :command (plist-get args :command)
                           :arguments (vector (eglot--VersionedTextDocumentIdentifier))))))

(defun cw-op-text (args)
  (let ((buffer (cw-buffer (plist-get args :path))))
    (list :text (cw-text buffer) :modified (if (buffer-modified-p buffer) t :false))))

(defun cw-op-wait_text (args)
  (let ((buffer (cw-buffer (plist-get args :path))))
    (cw-wait (format "text %s" (plist-get args :contains))
             (lambda () (cw-contains (cw-text buffer) (plist-get args :contains))))
    (cw-op-text args)))

(defun cw-op-wait_diagnostics (args)
  (let ((buffer (cw-buffer (plist-get args :path)))
        (needle (plist-get args :contains)))
    (cw-wait (format "diagnostics %s" (or needle (plist-get args :count)))
             (lambda ()
               ;; flymake asks eglot for what the server published so far
               (with-current-buffer buffer (flymake-start))
               (let ((found (cw-diagnostics buffer)))
                 (if needle
                     (cl-some (lambda (d) (cw-contains (plist-get d :message) needle)) found)
                   (= (length found) (plist-get args :count))))))
    (cw-diagnostics buffer)))

(defun cw-op-save (args)
  (with-current-buffer (cw-buffer (plist-get args :path)) (save-buffer))
  nil)

(defun cw-op-close (args)
  (kill-buffer (cw-buffer (plist-get args :path)))
  nil)

(defun cw-stop (server)
  "Shut SERVER down (shutdown, exit) and wait for its process to end."
  (let ((process (jsonrpc--process server)))
    (eglot-shutdown server nil cw-timeout)
    (cw-wait "the server's exit" (lambda () (not (process-live-p process))))
    (list :code (process-exit-status process))))

(defun cw-op-stop (_args) (cw-stop (cw-server)))

(defun cw-reply (message)
  (process-send-string cw-channel (concat (json-serialize message :null-object :null) "\n")))

(defun cw-receive (_process data)
  (setq cw-buffered (concat cw-buffered data))
  (let (newline)
    (while (setq newline (string-search "\n" cw-buffered))
      (setq cw-inbox (append cw-inbox (list (substring cw-buffered 0 newline)))
            cw-buffered (substring cw-buffered (1+ newline))))))

(defvar cw-closed nil)
(defvar cw-channel
  (make-network-process :name "cw-driver" :family 'local :service (getenv "CW_DRIVER_SOCKET")
                        :coding 'utf-8 :noquery t :filter #'cw-receive
                        :sentinel (lambda (_p _event) (setq cw-closed t))))

(cw-reply (list :ready t :pid (emacs-pid) :version emacs-version))
(catch 'quit
  (while t
    ;; the harness sends its next command when it wants; a command never runs in a filter
    (while (and (null cw-inbox) (not cw-closed)) (accept-process-output nil 0.005))
    (when (null cw-inbox) (throw 'quit nil))
    (let* ((command (json-parse-string (pop cw-inbox) :object-type 'plist
                                       :null-object nil :false-object nil))
           (id (plist-get command :id))
           (op (plist-get command :op))
           (args (plist-get command :args)))
      (if (equal op "quit")
          (progn
            (dolist (server (cw-servers))
              (when (jsonrpc-running-p server) (cw-stop server)))
            (cw-reply (list :id id :result (list :quit t)))
            (throw 'quit nil))
        (condition-case err
            (let ((result (funcall (intern (concat "cw-op-" op)) args)))
              (cw-reply (list :id id :result (or result :null))))
          (error (cw-reply (list :id id :error (error-message-string err)))))))))
(kill-emacs 0)
